const k = true; const f = k ? (a?: number) => a ?? 0 : null; return f!()
