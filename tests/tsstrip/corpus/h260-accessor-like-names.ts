const accessor = 1, override = 2, unique = 3; return accessor + override + unique
