const o = { interface: 1, type: 2, declare: 3 }; return o.interface + o.type + o.declare
