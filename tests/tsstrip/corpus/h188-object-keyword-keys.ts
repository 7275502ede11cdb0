const o = { type: 1, interface: 2, as: 3, get: 4, set: 5, async: 6, declare: 7, readonly: 8, new: 9, class: 10 }; return Object.values(o).reduce((a, b) => a + b)
