"""Pure privacy models: numpy in, numpy out, no database import."""
