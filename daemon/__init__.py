"""The service that wires memory, tools and voice together: settings, CLI, lifecycle."""
