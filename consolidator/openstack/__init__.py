"""The openstacksdk edge: the session, the inventory (read-only), Nova and Placement calls."""
