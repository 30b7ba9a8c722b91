"""pizza-controller: the bakery controller for restaurant.programming-kubernetes.info Pizzas.

Written as a user of this project would write a controller for their own API: with the `kubernetes`
Python package (a synchronous client, so informers and workers are threads), talking to the server
like any other client. It imports nothing of the server's packages.
"""
