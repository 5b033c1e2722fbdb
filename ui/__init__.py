"""The memory inspector: a local web page (127.0.0.1, a secret token in its address) that shows
what Parla remembers and corrects it through the same memory API as the CLI and the tools."""
