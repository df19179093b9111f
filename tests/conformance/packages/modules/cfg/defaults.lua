return {speed = 3, names = {'a', 'b'}, from = (...)}
