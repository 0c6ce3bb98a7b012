"""Lookup tables that the Python and the text engines share (env vars, dependencies), so one
value gets one verdict whichever file it is found in."""
