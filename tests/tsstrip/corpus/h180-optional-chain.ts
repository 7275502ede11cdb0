const o: any = { a: { b: [1] } }; return [o?.a?.b?.[0], o.x?.y, o.f?.()]
