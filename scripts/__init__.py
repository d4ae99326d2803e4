"""Developer scripts: cli_docs.py writes the sample outputs of docs/cli.md."""
