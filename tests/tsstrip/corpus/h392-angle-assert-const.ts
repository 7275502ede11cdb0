const t = <const>[1, 2]; const o = <const>{ a: 1, b: [2] }; return [t, o]
