"""Audio capture/playback and the Gemini Live session. Uses only `memory`'s types."""
