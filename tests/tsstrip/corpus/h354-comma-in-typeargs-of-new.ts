return new Map<string, [number, string]>([["a", [1, "b"]]]).get("a")
