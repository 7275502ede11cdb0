const m: unknown = new Map([["k", [1]]]); return (<Map<string, Array<number>>>m).get("k")
