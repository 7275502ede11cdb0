class A { get v(): Map<string, number> { return new Map<string, number>() } } return new A().v.size
