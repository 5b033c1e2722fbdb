"""Functions the live model may call (switch_chat, new_chat, remember, ...). Imports `memory` only."""
