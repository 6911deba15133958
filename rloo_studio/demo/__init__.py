"""The bundled demo: its arithmetic task and the tiny models built for it."""
