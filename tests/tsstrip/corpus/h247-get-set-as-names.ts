const get = (k: string) => k, set = (k: string) => k; return get("a") + set("b")
