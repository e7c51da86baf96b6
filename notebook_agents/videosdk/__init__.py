"""VideoSDK agent sessions offline: the room a session runs in, against the emulator."""
