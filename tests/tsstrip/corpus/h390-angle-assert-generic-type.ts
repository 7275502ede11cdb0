const y: unknown = ["a", "b"]; return (<Array<string>>y).join("-")
