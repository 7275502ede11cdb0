const f: (() => number) | undefined = () => 4; return f!()
