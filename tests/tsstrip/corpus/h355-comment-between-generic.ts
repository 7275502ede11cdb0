function f<T>(x: T) { return x } return f/* c */<number>/* d */(4)
