console.log("logged before failing");
throw new Error("fail");
