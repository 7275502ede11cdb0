const v = [1, 2] satisfies { [K in "a" | "b"]: K }; return v
