"""What every package of Parla shares and no domain owns: `ParlaError` (the base of every error
Parla explains in one line), ending owned tasks, the user's local time, the Gemini model ids,
spacing calls under a rate limit, the one token estimator and regular expressions compiled on
first use. It imports nothing of Parla."""
