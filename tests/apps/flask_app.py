"""A real Flask app exercising what web apps do: an HTML form POST, a multipart upload, JSON in
and out, a redirect, cookies, and a streamed response (``stream_with_context``).

- ``POST /form``      urlencoded fields → JSON object of the fields
- ``POST /upload``    multipart field ``file`` (+ text field ``note``) → JSON {name, size,
                      sha256, note}
- ``POST /json``      JSON body → JSON {"received": body, "sum": sum(body["numbers"])}
- ``GET /redirect``   302 to ``/target``; ``GET /target`` → ``target reached``
- ``GET /set-cookie`` sets ``flavour=oatmeal``; ``GET /read-cookie`` → ``flavour=<value>``
- ``GET /stream?n=N`` N chunks ``chunk i\\n`` from a generator in stream_with_context
- ``GET /events?name=G`` server-sent events: one event, then it waits for the test's gate G,
                      then a second one (the first must reach the client while it waits)
"""

import hashlib

from flask import Flask, Response, jsonify, redirect, request, stream_with_context

from tests.apps._state import wait_gate

app = Flask(__name__)


@app.post("/form")
def form():
    return jsonify({k: v for k, v in request.form.items()})


@app.post("/upload")
def upload():
    f = request.files["file"]
    data = f.read()
    return jsonify({"name": f.filename, "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "note": request.form.get("note")})


@app.post("/json")
def json_echo():
    body = request.get_json()
    return jsonify({"received": body, "sum": sum(body.get("numbers", []))})


@app.get("/redirect")
def go():
    return redirect("/target", code=302)


@app.get("/target")
def target():
    return "target reached"


@app.get("/set-cookie")
def set_cookie():
    resp = Response("cookie set")
    resp.set_cookie("flavour", "oatmeal")
    return resp


@app.get("/read-cookie")
def read_cookie():
    return "flavour=" + request.cookies.get("flavour", "<none>")


@app.get("/stream")
def stream():
    n = int(request.args.get("n", "5"))

    @stream_with_context
    def gen():
        for i in range(n):
            # Uses the request inside the generator: only works with stream_with_context.
            yield f"chunk {i} of {request.args.get('n', '5')}\n"
    return Response(gen(), mimetype="text/plain")


@app.get("/events")
def events():
    name = request.args["name"]

    def gen():
        yield "data: one\n\n"
        wait_gate(name)
        yield "data: two\n\n"
    return Response(gen(), mimetype="text/event-stream", headers={"Cache-Control": "no-cache"})
