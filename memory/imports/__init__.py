"""Reading chat histories for `parla import`: our own JSONL, and the exports of ChatGPT, Claude and
Open WebUI, each read streaming and turned into Parla's import shape (`memory.imports.importer`).
`reading.open_export` detects the format; each format has its module."""
