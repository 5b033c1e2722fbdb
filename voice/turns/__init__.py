"""Turn-taking: who has the floor while Parla speaks and when the user's turn has ended, decided
locally (`floor`, `end_of_turn`) or left to the service."""
