"""The probe's one app: S6's hello world, S1's bodies, S2's app path and S3's streams behind one
server, by the first path segment (/s6/, /s1/, /s2/, /s3/, the rest of the path is the
scenario app's), so that one server under callgrind counts every case in turn. The dispatch adds
the same few Python steps to every case, before and after alike.
"""

import s1_bodies
import s2_static
import s3_stream
import s6_hello

APPS = {"s1": s1_bodies.app, "s2": s2_static.app, "s3": s3_stream.app, "s6": s6_hello.app}


def app(environ, start_response):
    key, _, rest = environ["PATH_INFO"][1:].partition("/")
    environ["PATH_INFO"] = "/" + rest
    return APPS[key](environ, start_response)
