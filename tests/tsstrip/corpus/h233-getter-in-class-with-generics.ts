class Q<T> { private items: T[] = []; push(x: T): this { this.items.push(x); return this } get size(): number { return this.items.length } } return new Q<number>().push(1).push(2).size
