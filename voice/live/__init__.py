"""The Gemini Live session: `LiveConversation` (`conversation`) owns the connection loop
(`connections`, renewed as `renewal` says), the model's turn from the server's content
(`model_turn`), what is sent when (`delivery`, `send`) and read (`messages`), the session setup and
what each model family accepts, close codes and reconnecting, transcripts assembled into turns,
tool calls as owned tasks, finished turns saved off the audio path (`chat_turns`, `turn_saver`),
latency and status."""
