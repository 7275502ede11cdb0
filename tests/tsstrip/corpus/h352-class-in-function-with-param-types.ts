function mk() { return class { constructor(public_a: number) {} } } return typeof mk()
