"""``nmt serve``: a translation API and a page to explore attention.

Flow: :mod:`~nmt.serve.models` loads every checkpoint once and turns id sequences into
response rows; :mod:`~nmt.serve.batcher` runs every search on one worker thread and merges
requests that arrive together into one search call; :mod:`~nmt.serve.app` is the FastAPI
application (request schema in :mod:`~nmt.serve.schema`, bounds in :mod:`~nmt.serve.limits`)
and the static page in ``static/``; :mod:`~nmt.serve.server` starts uvicorn on a socket bound
before the models load (:mod:`~nmt.serve.listen`), with a read timeout on every connection
(:mod:`~nmt.serve.protocol`).
"""
