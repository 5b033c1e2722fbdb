"""The user's own tools through the Model Context Protocol: a server in the config file
(`config`), one server kept connected and restarted (`client`), and the servers' tools for the
registry, with confirmation before a change and their results marked untrusted (`tools`)."""
