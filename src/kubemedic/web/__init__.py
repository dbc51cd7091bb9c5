"""The dashboard: a read-only web view and JSON API over the archive (``kubemedic web``).

``app.create_app`` builds the ASGI application (FastAPI) over an open archive; ``api`` is the
JSON API under ``/api/v1`` (keyset-paged lists, documented at ``/openapi.json``); ``pages`` the
server-rendered HTML (Jinja2 templates shipped in ``templates/``); ``charts`` draws the SVG
charts on the server; ``reading`` reads the archive (the store's ``browsing`` queries, the
incidents grouped and cached); ``serving`` runs it with uvicorn on a loopback address, or on
any address behind a token; ``rightsizing`` the recommendations of :mod:`kubemedic.recommend`
over the same archive.

May import: :mod:`kubemedic.recommend` (the layer below), :mod:`kubemedic.incidents`,
:mod:`kubemedic.store`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`; never the simulator,
the live client or the command line.
"""

__all__ = ["api", "app", "charts", "pages", "reading", "rightsizing", "serving"]
