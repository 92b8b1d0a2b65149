"""Small, deliberately bad models for frontend tests."""
