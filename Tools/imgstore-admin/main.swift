print("imgstore-admin")
