const x = { enum: 1, interface: 2 }; return x.enum + x.interface
