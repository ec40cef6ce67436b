"""`taguru-ray serve`'s HTTP server: Taguru's wire surface (EVALUATE.md §1) over an
embedded context store. `app` frames requests (errors, auth) and runs the server,
`routes` answers each route, `requests` parses and validates bodies and query
strings, `envelope` says the answer shapes once, `auth` reads bearer keys and roles
as the reference does, `deadlines` bounds how long a client may take to send a
request, `state` holds one server's store, pool and settings."""

from taguru_ray.serve.app import create_app, serve
from taguru_ray.serve.state import ServeConfig

__all__ = ["ServeConfig", "create_app", "serve"]
