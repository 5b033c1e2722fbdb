"""The Gemini Live session: the conversation's connection loop (`conversation`), what is sent
(`send`) and read (`messages`), the session setup and what each model family accepts, close
codes and reconnecting, transcripts assembled into turns, tool calls as owned tasks, finished
turns saved off the audio path, latency and status."""
