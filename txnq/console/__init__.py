"""The web console (issue 21, docs/console.md): a page that shows what the
queue is doing, served by ``txnq console`` and ``txnq standalone``.

One module per concern:

- ``samples``: the chart history the scheduler's ``console_sample`` job
  keeps (``txnq.console_sample_v1``), the only part the workers import;
- ``reads``: what the page shows, read through the inspection views and
  public txnq functions (``sql/queries/console.sql``), never the tables;
- ``actions``: what an administrator may do from the page, each through
  ``client.admin`` (or a producer) and recorded in ``txnq.console_actions``;
- ``app``: the HTTP face (Starlette): the page, its JSON endpoints, errors;
- ``server``: uvicorn in a thread of its own, for the CLI.

Importing this package imports neither Starlette nor uvicorn: the scheduler
imports ``samples`` without them.
"""
