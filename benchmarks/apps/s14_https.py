"""S14 app: the three HTTPS cases in one app, so that one server process per peer serves them
all (each route is the app of the scenario it comes from):

  /                         hello world (S6's app)
  /static/file_21324.bin    the field report's 21,324-byte file through `wsgi.file_wrapper` (S2's)
  /file/64MiB               a 64 MiB response through `wsgi.file_wrapper` (S1's)
"""

import s1_bodies
import s2_static
import s6_hello


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path.startswith("/static/"):
        return s2_static.app(environ, start_response)
    if path.startswith("/file/"):
        return s1_bodies.app(environ, start_response)
    return s6_hello.app(environ, start_response)


application = app
