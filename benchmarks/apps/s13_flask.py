"""S13's variant with a connection pool: Flask and SQLAlchemy (Core) over psycopg 3, the same
page as `s13_django` (a primary-key lookup and the 100-row aggregate over the 10,000-row table,
rendered by a small Jinja template), `s13_flask:app`. The pool is SQLAlchemy's QueuePool with
`pool_size` 8 and no overflow, shared by every thread of the process: the server's threads
wait for one of the 8 connections, whatever their number (`pool_size` in S13's `db.json`
changes it). `/hello` answers without Flask (every server's readiness probe).
"""

import json
from pathlib import Path

from flask import Flask, render_template_string
from sqlalchemy import create_engine, text

CONFIG = Path(__file__).resolve().parent.parent / ".work" / "s13" / "db.json"
_db = json.loads(CONFIG.read_text()) if CONFIG.exists() else {}

POOL_SIZE = int(_db.get("pool_size", 8))
engine = create_engine(
    f"postgresql+psycopg://{_db.get('user', 'postgres')}@/{_db.get('name', 's13')}"
    f"?host={_db.get('host', '/tmp')}&port={_db.get('port', 5432)}",
    pool_size=POOL_SIZE,
    max_overflow=0,
    pool_timeout=30,
)

ITEM = text("SELECT id, name, category, price FROM s13_item WHERE id = :pk")
NEAR = text("SELECT count(id) AS n, avg(price) AS avg, min(price) AS low, max(price) AS high "
            "FROM s13_item WHERE id BETWEEN :low AND :high")

PAGE = """<!doctype html>
<html><head><title>{{ item.name }}</title></head>
<body>
<h1>{{ item.name }}</h1>
<p>Item {{ item.id }} in category {{ item.category }} costs {{ item.price }}.</p>
<table>
<tr><th>items</th><th>average</th><th>lowest</th><th>highest</th></tr>
<tr><td>{{ near.n }}</td><td>{{ '%.2f' % near.avg }}</td><td>{{ near.low }}</td><td>{{ near.high }}</td></tr>
</table>
</body></html>"""

flask_app = Flask(__name__)


@flask_app.route("/item/<int:pk>")
def item(pk: int) -> str:
    with engine.connect() as conn:
        it = conn.execute(ITEM, {"pk": pk}).one()
        near = conn.execute(NEAR, {"low": pk, "high": pk + 99}).one()
    return render_template_string(PAGE, item=it, near=near)


def app(environ, start_response):
    if environ.get("PATH_INFO") == "/hello":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
        return [b"hello"]
    return flask_app(environ, start_response)
