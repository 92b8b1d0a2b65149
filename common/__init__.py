"""Types shared by every pipeline stage (the only module stages share)."""
