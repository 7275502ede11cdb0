let xs: (string | number)[] = [1, "a"]; return xs
