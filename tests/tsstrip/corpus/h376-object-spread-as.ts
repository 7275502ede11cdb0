const a = { x: 1 }; return { ...(a as object), y: 2 }
