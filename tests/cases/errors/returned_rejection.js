return Promise.reject(new Error("returned rejection"));
