"""The WSGI example for gunicorn and uWSGI: a little CPU per request."""
import os

TABLE = [str(i) * 16 for i in range(50000)]  # built at import: shared with --preload


def app(environ, start_response):
    total = sum(len(TABLE[i]) for i in range(0, 50000, 50))
    body = f"hello from wsgi, pid {os.getpid()}, {total}\n".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
