"""``dpstudio serve``'s setup without a browser: the websocket origins it allows."""

import socket

from dpstudio.app.serve import free_port, websocket_origins


def test_origins_name_the_bound_address_and_port():
    assert websocket_origins("localhost", 5006, []) == ["127.0.0.1:5006", "localhost:5006"]
    assert "192.0.2.7:8000" in websocket_origins("192.0.2.7", 8000, [])


def test_every_interface_allows_this_machines_names_and_extra_ones():
    origins = websocket_origins("0.0.0.0", 6001, ["proxy.example:443"])
    assert f"{socket.gethostname()}:6001" in origins and "localhost:6001" in origins
    assert "0.0.0.0:6001" not in origins and origins[-1] == "proxy.example:443"
    assert all(origin.count(":") == 1 for origin in origins)


def test_port_zero_becomes_a_real_free_port():
    port = free_port("localhost")
    assert port > 0
    with socket.socket() as probe:
        probe.bind(("localhost", port))  # free indeed
