try { null.x } catch (e: any) { return e.constructor.name }
