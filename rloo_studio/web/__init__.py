"""Who may reach the app and the checks every request passes."""
