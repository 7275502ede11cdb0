let type = 1; type = 2; return type
