"""Sound in and out: the devices through sounddevice (`devices`), echo cancellation with what the
speaker played as reference (`echo`), the near-end voice detector beside it, the gated
microphone, the session cues, speech for reminders and the offline wake phrase."""
