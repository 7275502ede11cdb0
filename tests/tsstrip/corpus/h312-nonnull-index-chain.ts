const x: any = [{ y: 5 }]; return x![0]!.y
