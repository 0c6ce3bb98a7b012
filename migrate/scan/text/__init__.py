"""Non-Python files (shell, Docker, YAML/CI, Make, CMake, requirements, pyproject, .cu):
mask comments, then run the text rule kinds."""
