# Behind nginx: a unix socket only the web server's group may use.
import os

bind = "unix:" + os.path.join(os.environ["SOCKET_DIR"], "gunicorn.sock")
umask = 0o007
workers = 3
timeout = 60
forwarded_allow_ips = "*"
accesslog = "-"
